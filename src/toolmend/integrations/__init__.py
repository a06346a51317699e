"""Bridges to other engines, each an optional extra: :mod:`toolmend.integrations.verl` hands
toolmend's world, tools and rewards to verl's multi-turn RL loop (``pip install 'toolmend[verl]'``).
"""
