"""bead setup: units or agents, the shell wrapper, the rc block; and bead up."""
