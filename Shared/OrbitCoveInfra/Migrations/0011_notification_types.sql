-- News about a community itself (created, settings changed, role changed) for its members'
-- notification history; the seed's types cover only content.
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'community_update';
