"""toolmend.env"""
