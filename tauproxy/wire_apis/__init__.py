"""The wire APIs serve answers."""
