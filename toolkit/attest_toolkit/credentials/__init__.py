"""What a credential looks like (`scan`), which names hold one (`names`), and secrets known by their
surroundings (`context`).
"""
