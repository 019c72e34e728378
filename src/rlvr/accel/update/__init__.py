"""The update's faster exact forwards behind rlvr.update_paths (see rlvr.accel)."""
