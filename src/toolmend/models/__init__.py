"""toolmend.models"""
