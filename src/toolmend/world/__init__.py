"""toolmend.world"""
