-- The seed's retention table: revoked tokens are hard-deleted after 30 days. Core's retention
-- job deletes refresh tokens revoked, or expired, more than 30 days ago; expiry already has
-- its index (0012), this is revocation's.
CREATE INDEX idx_refresh_tokens_revoked ON refresh_tokens(revoked_at) WHERE revoked_at IS NOT NULL;
