"""Link routing (Qpid Dispatch 0.7 book, 2.4): attaches passed through a router to a route container."""
