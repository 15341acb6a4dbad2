"""The decision path's steps."""
