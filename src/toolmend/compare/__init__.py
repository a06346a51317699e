"""toolmend.compare"""
