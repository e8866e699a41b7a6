-- Shared care reminders get a notification type of their own (issue 25), in a migration of its
-- own: a value added to an enum cannot be used in the transaction that adds it.
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'care_reminder';
