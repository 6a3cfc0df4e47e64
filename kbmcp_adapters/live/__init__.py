"""Live sync: the file watcher and its status file."""
