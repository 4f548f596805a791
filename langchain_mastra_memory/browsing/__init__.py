"""Reading memory a page at a time: `paging` (the `Page`, `MessagePage` and `SearchHit`
records) and `browse` (threads, messages and search hits, paged as Mastra 1.x does)."""
