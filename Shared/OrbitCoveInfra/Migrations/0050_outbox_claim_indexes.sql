-- Since migration 0047 the relay finds the rows in flight in `outbox_in_flight`; the index of
-- every waiting row by community no longer answers anything, and under a burst of messages
-- PostgreSQL's planner, believing few rows waited, chose it to read and sort the whole
-- backlog on every claim. Dropped: one index fewer to write per message, one wrong plan fewer.
DROP INDEX idx_outbox_unpublished_community;
