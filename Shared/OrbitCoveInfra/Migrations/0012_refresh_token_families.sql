-- Refresh token rotation (issue 4). Each sign-in starts a family; every refresh spends the
-- presented token (rotated_at, replaced_by) and adds its successor to the same family.
-- Presenting a spent token again, outside a short grace window, revokes the whole family.
ALTER TABLE refresh_tokens
    ADD COLUMN family_id UUID NOT NULL,
    ADD COLUMN rotated_at TIMESTAMP WITH TIME ZONE,
    ADD COLUMN replaced_by UUID REFERENCES refresh_tokens(id) ON DELETE SET NULL,
    ADD COLUMN revoked_reason VARCHAR(30);

CREATE INDEX idx_refresh_tokens_family ON refresh_tokens(family_id);

-- The retention job deletes expired tokens by this index.
CREATE INDEX idx_refresh_tokens_expires ON refresh_tokens(expires_at);
