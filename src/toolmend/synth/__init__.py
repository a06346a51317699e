"""toolmend.synth"""
