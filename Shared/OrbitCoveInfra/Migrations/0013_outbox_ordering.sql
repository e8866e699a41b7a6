-- The relay holds back a community's message while an earlier one of the same community is
-- in flight; this index answers that check from the unpublished rows alone.
CREATE INDEX idx_outbox_unpublished_community ON outbox(community_id, seq) WHERE published_at IS NULL;
