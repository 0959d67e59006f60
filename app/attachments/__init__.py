"""Attachments: files users upload into a conversation and images tools return."""
