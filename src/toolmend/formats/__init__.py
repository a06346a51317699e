"""toolmend.formats"""
