"""toolmend.strategies"""
