"""toolmend.train"""
