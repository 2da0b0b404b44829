"""Recall: cue extraction, scoring and selection under a budget."""
