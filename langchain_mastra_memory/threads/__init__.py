"""Threads: who owns one (`ids`: the package's rule for ``thread_id``, ``resource_id``,
``user_id`` and the default), a thread's summary (`summaries`), and moving them in and out as
JSON Lines (`transfer`). The `Thread` record is storage's (`storage.records`)."""
