"""udev: rules files in the order udevd reads them, and their evaluation."""
