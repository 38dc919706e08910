"""What keeps untrusted text in its place, all pure: fences, per-session taint, credential and
sensitive-word screening."""
