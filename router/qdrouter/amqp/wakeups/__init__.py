"""What wakes the event loop: the readiness poller (epoll by descriptor) and the one-shot timers."""
