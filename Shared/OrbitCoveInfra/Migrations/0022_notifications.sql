-- Notifications: each message's history rows once per recipient, the member's preferences
-- applied in the statement that writes them, devices, and the push state of each row.

-- History ----------------------------------------------------------------------------------
-- `message_id` is the message that caused the row: with the unique index, a redelivered or
-- replayed message writes nothing twice, even after its inbox entry was pruned.
-- `push_at` is when the row's push is due (NULL: none, or done); `push_queued` says a push job
-- for it was queued (at once for a due push; by the scheduler for one deferred by quiet hours).
ALTER TABLE notifications
    ADD COLUMN message_id UUID,
    ADD COLUMN push_at TIMESTAMP WITH TIME ZONE,
    ADD COLUMN push_queued BOOLEAN NOT NULL DEFAULT false,
    ADD COLUMN collapse_id VARCHAR(64);
CREATE UNIQUE INDEX notifications_once ON notifications (message_id, user_id);
CREATE INDEX notifications_push_owed ON notifications (push_at) WHERE push_at IS NOT NULL;
CREATE INDEX notifications_age ON notifications (created_at);
DROP INDEX idx_notifications_user;
CREATE INDEX idx_notifications_user ON notifications (user_id, created_at DESC, id DESC);
CREATE INDEX notifications_user_community ON notifications (user_id, community_id, created_at DESC, id DESC);

-- Preferences ------------------------------------------------------------------------------
-- `members.notification_prefs`, as PATCH …/members/me/notification-preferences writes it:
--   {"push": bool, "categories": {"events": bool, ...}, "mutedEvents": ["<series id>", ...],
--    "quietHours": {"start": "22:00", "end": "07:00", "timeZone": "Europe/Berlin",
--                   "breakThrough": ["announcements", "mentions"]}}
-- Anything absent means on. `personal` news (about the member themself) has no switch.
-- Values are compared as JSON, never cast: settings the API did not write (a seed, a hand
-- edit) read as "on" instead of failing the statement, and with it everyone's history.
CREATE FUNCTION notification_wanted(prefs jsonb, category text, series uuid) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT category = 'personal'
        OR (prefs -> 'categories' -> category IS DISTINCT FROM 'false'::jsonb
            AND (series IS NULL OR NOT coalesce(prefs -> 'mutedEvents' ? series::text, false)))
$$;

-- When a row's push is due: NULL when the member turned push off; `at` unless `at` falls in
-- their quiet hours (read in their own zone) and the category may not break through; else the
-- end of the quiet hours. A window may span midnight (22:00–07:00).
CREATE FUNCTION notification_push_at(prefs jsonb, category text, at timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
DECLARE
    quiet jsonb := prefs -> 'quietHours';
    zone text;
    starts time;
    ends time;
    here timestamp;
    until timestamp;
BEGIN
    IF prefs -> 'push' = 'false'::jsonb THEN
        RETURN NULL;
    END IF;
    IF quiet IS NULL OR jsonb_typeof(quiet) <> 'object' OR coalesce(quiet -> 'breakThrough' ? category, false) THEN
        RETURN at;
    END IF;
    -- A block of its own, entered only with quiet hours: settings that no longer read (a zone
    -- the database dropped) cost that member their quiet hours, never the statement its rows.
    BEGIN
        zone := quiet ->> 'timeZone';
        starts := (quiet ->> 'start')::time;
        ends := (quiet ->> 'end')::time;
        here := at AT TIME ZONE zone;
        IF starts = ends THEN
            RETURN at;
        ELSIF starts < ends THEN
            IF here::time >= starts AND here::time < ends THEN until := here::date + ends; END IF;
        ELSIF here::time >= starts THEN
            until := here::date + 1 + ends;
        ELSIF here::time < ends THEN
            until := here::date + ends;
        END IF;
        RETURN coalesce(until AT TIME ZONE zone, at);
    EXCEPTION WHEN others THEN
        RETURN at;
    END;
END
$$;

-- A member's notification settings are theirs alone: changing them is not a change the
-- community's other members sync.
DROP TRIGGER trigger_change_log ON members;
CREATE TRIGGER trigger_change_log AFTER INSERT OR DELETE ON members
FOR EACH ROW EXECUTE FUNCTION log_community_change('member');
CREATE TRIGGER trigger_change_log_update AFTER UPDATE ON members
FOR EACH ROW WHEN ((to_jsonb(OLD) - 'notification_prefs') IS DISTINCT FROM (to_jsonb(NEW) - 'notification_prefs'))
EXECUTE FUNCTION log_community_change('member');

-- Devices ----------------------------------------------------------------------------------
-- An APNs device token belongs to the last user who registered it (a phone changes hands, or
-- its owner signs in to another account): registering moves it.
CREATE TABLE devices (
    token VARCHAR(200) PRIMARY KEY CHECK (token ~ '^[0-9a-f]{64,200}$'),
    user_id UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    environment VARCHAR(10) NOT NULL CHECK (environment IN ('sandbox', 'production')),
    bundle_id VARCHAR(155) NOT NULL,
    locale VARCHAR(35),
    created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW()
);
CREATE INDEX devices_user ON devices (user_id);
ALTER TABLE devices ENABLE ROW LEVEL SECURITY;
CREATE POLICY devices_owner ON devices FOR ALL
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());

-- Takes the token from whoever had it: past RLS, for the asking user only.
CREATE FUNCTION app_register_device(device_token text, device_environment text, device_bundle text, device_locale text)
RETURNS TABLE (token text, environment text, bundle_id text, locale text, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    me uuid := app_current_user_id();
BEGIN
    IF me IS NULL THEN
        RAISE EXCEPTION 'no user is asking' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY
    INSERT INTO devices AS d (token, user_id, environment, bundle_id, locale)
    VALUES (device_token, me, device_environment, device_bundle, device_locale)
    ON CONFLICT ON CONSTRAINT devices_pkey DO UPDATE
        SET user_id = excluded.user_id, environment = excluded.environment, bundle_id = excluded.bundle_id,
            locale = excluded.locale, updated_at = NOW(),
            created_at = CASE WHEN d.user_id = excluded.user_id THEN d.created_at ELSE NOW() END
    RETURNING d.token::text, d.environment::text, d.bundle_id::text, d.locale::text, d.created_at, d.updated_at;
END
$$;

-- Push receipts ----------------------------------------------------------------------------
-- What APNs answered for one row on one device, once it is final (accepted, or refused for
-- good): a retried push job sends only to devices without a receipt.
CREATE TABLE push_receipts (
    notification_id UUID NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
    token VARCHAR(200) NOT NULL,
    status SMALLINT NOT NULL,
    apns_id UUID,
    reason VARCHAR(100),
    sent_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    PRIMARY KEY (notification_id, token)
);
ALTER TABLE push_receipts ENABLE ROW LEVEL SECURITY;
CREATE POLICY push_receipts_system ON push_receipts FOR ALL USING (app_is_system()) WITH CHECK (app_is_system());
