-- The kinds of notification the calendar and membership news produce, so a client can show
-- each with its own words and icon. Alone in its file: a new enum value cannot be used in the
-- transaction that adds it.
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'event_created';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'event_changed';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'event_cancelled';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'waitlist_promoted';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'member_joined';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'member_left';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'member_removed';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'role_changed';
