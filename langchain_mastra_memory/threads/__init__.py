"""Threads: the `Thread` record (`thread`), who owns one (`ids`: the package's rule for
``thread_id``, ``resource_id``, ``user_id`` and the default), and moving them in and out as
JSON Lines (`transfer`)."""
