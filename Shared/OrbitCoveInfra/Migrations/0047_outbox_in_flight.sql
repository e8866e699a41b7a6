-- The relay's claim holds back a community's message while an earlier one of the same community
-- is in flight. It looked for that earlier row among every row of the table (a sequential scan
-- of published rows kept for a week too: 800 ms a claim with 30,000 messages waiting, while
-- every other relay queued behind its advisory lock). Rows in flight are the few claimed and
-- not yet published (publishing and releasing clear `claimed_until`): this index holds just
-- those, and the claim reads the in-flight communities from it once.
CREATE INDEX outbox_in_flight ON outbox (community_id, seq) WHERE published_at IS NULL AND claimed_until IS NOT NULL;
