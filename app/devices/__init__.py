"""Phones that receive push notifications: register, list, remove (APNs device tokens)."""
