"""Link routing (book 2.4): attaches passed through a router to a route container."""
