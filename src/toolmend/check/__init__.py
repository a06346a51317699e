"""toolmend.check"""
