-- The calendar: recurring series with exceptions and overrides, cancellations, capacities
-- with waitlists, RSVPs per instance for members and their dependants, and ICS feed tokens.

-- events ------------------------------------------------------------------------------------
-- A series is a row with a recurrence_rule; an override is a full copy of one instance, keyed
-- by its parent and the instance's original start (recurrence_id), which remembers which of
-- its fields were edited on it (overridden_fields) so a change to the whole series keeps them.
ALTER TABLE events ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
ALTER TABLE events ADD COLUMN exception_dates TIMESTAMP WITH TIME ZONE[] NOT NULL DEFAULT '{}';
ALTER TABLE events ADD COLUMN capacity INTEGER CHECK (capacity BETWEEN 1 AND 100000);
ALTER TABLE events ADD COLUMN recurrence_id TIMESTAMP WITH TIME ZONE;
-- The last instance's start (NULL: the series does not end), so a window read skips ended series.
ALTER TABLE events ADD COLUMN recurrence_end TIMESTAMP WITH TIME ZONE;
ALTER TABLE events ADD COLUMN overridden_fields TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE events ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN cancelled_at TIMESTAMP WITH TIME ZONE;
ALTER TABLE events ADD CONSTRAINT events_override_keyed
    CHECK ((recurrence_parent_id IS NULL) = (recurrence_id IS NULL));
ALTER TABLE events ADD CONSTRAINT events_ends_after_start CHECK (ends_at IS NULL OR ends_at >= starts_at);
CREATE UNIQUE INDEX idx_events_override ON events(recurrence_parent_id, recurrence_id) WHERE deleted_at IS NULL;
CREATE INDEX idx_events_series ON events(community_id, starts_at)
    WHERE deleted_at IS NULL AND recurrence_rule IS NOT NULL;
-- A calendar feed's version reads the newest change per community without reading the events.
CREATE INDEX idx_events_community_updated ON events(community_id, updated_at);

-- Every change is a new version: calendar apps see SEQUENCE rise and LAST-MODIFIED move.
CREATE FUNCTION events_new_version() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF NEW IS DISTINCT FROM OLD THEN
        NEW.sequence := OLD.sequence + 1;
        -- The moment of the change, not the transaction's start: a feed's version is the newest.
        NEW.updated_at := clock_timestamp();
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER events_version BEFORE UPDATE ON events FOR EACH ROW EXECUTE FUNCTION events_new_version();

-- The creator of a series also edits its overrides, whoever made them. (The caller's series
-- are read past row-level security: a policy on events cannot query events itself.)
CREATE FUNCTION app_own_series() RETURNS SETOF UUID
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT id FROM events WHERE created_by = app_current_user_id() AND recurrence_rule IS NOT NULL
$$;
DROP POLICY events_change ON events;
CREATE POLICY events_change ON events FOR UPDATE
    USING (app_is_system() OR community_id IN (SELECT app_admin_communities())
           OR (community_id IN (SELECT app_member_communities())
               AND (created_by = app_current_user_id()
                    OR recurrence_parent_id IN (SELECT app_own_series()))))
    WITH CHECK (app_is_system() OR community_id IN (SELECT app_member_communities()));

-- rsvps -------------------------------------------------------------------------------------
-- One answer per person (a member, or one of their dependants) per instance. queued_at is the
-- answer's place in line for a full event: it moves only when the answer becomes yes or asks
-- for more seats.
ALTER TABLE rsvps ADD COLUMN recurrence_id TIMESTAMP WITH TIME ZONE;
ALTER TABLE rsvps ADD COLUMN queued_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW();
ALTER TABLE rsvps ADD CONSTRAINT rsvps_plus_ones_range CHECK (plus_ones BETWEEN 0 AND 20);
ALTER TABLE rsvps DROP CONSTRAINT rsvps_event_id_user_id_family_member_id_key;
CREATE UNIQUE INDEX idx_rsvps_person ON rsvps(event_id, recurrence_id, user_id, family_member_id) NULLS NOT DISTINCT;
-- A feed's version reads the newest answer of its owner from the index alone.
CREATE INDEX idx_rsvps_user ON rsvps(user_id, updated_at);

-- Whether a yes waits for a place: yeses are placed against the instance's capacity in answer
-- order (queued_at), each taking 1 + plus_ones seats. Kept on the row, so reading an instance's
-- counts is a plain aggregate; the one function that writes it runs as the owner (the rows are
-- other people's answers), under the caller's per-instance lock, for an instance of an event
-- the caller can see.
ALTER TABLE rsvps ADD COLUMN waitlisted BOOLEAN NOT NULL DEFAULT false;
CREATE FUNCTION calendar_place_answers(event UUID, instance TIMESTAMP WITH TIME ZONE)
RETURNS INTEGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    changed INTEGER;
    capacity INTEGER;
BEGIN
    IF NOT app_is_system() AND NOT EXISTS (
        SELECT 1 FROM events e WHERE e.id = event AND e.community_id IN (SELECT app_member_communities())
    ) THEN
        RAISE EXCEPTION 'not allowed to place answers to this event' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- The instance's capacity as committed now: its override's, or its series' (or the event's).
    SELECT CASE WHEN o.id IS NOT NULL THEN o.capacity ELSE e.capacity END INTO capacity
    FROM events e
    LEFT JOIN events o ON o.recurrence_parent_id = e.id AND o.recurrence_id = instance AND o.deleted_at IS NULL
    WHERE e.id = event;
    UPDATE rsvps r SET waitlisted = placed.waitlisted
    FROM (
        SELECT a.id, a.status = 'yes' AND capacity IS NOT NULL
               AND sum(CASE WHEN a.status = 'yes' THEN 1 + a.plus_ones ELSE 0 END)
                   OVER (ORDER BY a.queued_at, a.id) > capacity AS waitlisted
        FROM rsvps a WHERE a.event_id = event AND a.recurrence_id IS NOT DISTINCT FROM instance
    ) placed
    WHERE r.id = placed.id AND r.waitlisted IS DISTINCT FROM placed.waitlisted;
    GET DIAGNOSTICS changed = ROW_COUNT;
    RETURN changed;
END $$;

-- Each instance's counts, kept by a trigger on rsvps (whatever writes an answer: an RSVP,
-- a place given, a series split or moved, an account deleted), so a window read of a busy
-- calendar reads one row per instance instead of counting every answer.
CREATE TABLE event_instance_counts (
    event_id UUID NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    recurrence_id TIMESTAMP WITH TIME ZONE,
    community_id UUID NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    going INTEGER NOT NULL,
    seats INTEGER NOT NULL,
    maybe INTEGER NOT NULL,
    declined INTEGER NOT NULL,
    waitlisted INTEGER NOT NULL
);
CREATE UNIQUE INDEX idx_event_instance_counts ON event_instance_counts(event_id, recurrence_id) NULLS NOT DISTINCT;
ALTER TABLE event_instance_counts ENABLE ROW LEVEL SECURITY;
-- Members read them; only the trigger (as the owner) writes them.
CREATE POLICY event_instance_counts_read ON event_instance_counts FOR SELECT
    USING (app_is_system() OR community_id IN (SELECT app_member_communities()));

CREATE FUNCTION count_instance_answers(event UUID, instance TIMESTAMP WITH TIME ZONE) RETURNS VOID
LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
    INSERT INTO event_instance_counts AS c
        (event_id, recurrence_id, community_id, going, seats, maybe, declined, waitlisted)
    SELECT event, instance, e.community_id,
           count(r.id) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted),
           coalesce(sum(1 + r.plus_ones) FILTER (WHERE r.status = 'yes' AND NOT r.waitlisted), 0),
           count(r.id) FILTER (WHERE r.status = 'maybe'),
           count(r.id) FILTER (WHERE r.status = 'no'),
           count(r.id) FILTER (WHERE r.waitlisted)
    FROM events e
    LEFT JOIN rsvps r ON r.event_id = e.id AND r.recurrence_id IS NOT DISTINCT FROM instance
    WHERE e.id = event
    GROUP BY e.community_id
    ON CONFLICT (event_id, recurrence_id) DO UPDATE SET
        going = EXCLUDED.going, seats = EXCLUDED.seats, maybe = EXCLUDED.maybe, declined = EXCLUDED.declined,
        waitlisted = EXCLUDED.waitlisted
$$;

CREATE FUNCTION rsvps_count() RETURNS TRIGGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM count_instance_answers(OLD.event_id, OLD.recurrence_id);
    END IF;
    IF TG_OP = 'INSERT' OR NEW.event_id <> OLD.event_id OR NEW.recurrence_id IS DISTINCT FROM OLD.recurrence_id THEN
        IF TG_OP <> 'DELETE' THEN
            PERFORM count_instance_answers(NEW.event_id, NEW.recurrence_id);
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER rsvps_counts AFTER INSERT OR UPDATE OR DELETE ON rsvps
    FOR EACH ROW EXECUTE FUNCTION rsvps_count();

-- A member's own answers are read without working out which events they can see.
DROP POLICY rsvps_read ON rsvps;
CREATE POLICY rsvps_read ON rsvps FOR SELECT
    USING (app_is_system() OR user_id = app_current_user_id() OR event_id IN (SELECT id FROM events));

-- A dependant's name, for fellow members of a community whose event the dependant answered
-- (attendance lists them); nobody else's. Read past row-level security, which keeps
-- family_members to their owner.
CREATE FUNCTION app_dependant_name(dependant UUID) RETURNS TEXT
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT f.name FROM family_members f
    WHERE f.id = dependant AND EXISTS (
        SELECT 1 FROM rsvps r JOIN events e ON e.id = r.event_id
        WHERE r.family_member_id = dependant AND e.community_id IN (SELECT app_member_communities()))
$$;

-- Moves the answers to instances from `at` on from one series to another (splitting a series)
-- and shifts their instance keys by a wall-clock `shift` in `zone` (a series moved in time).
-- The answers are other people's rows, so this runs as the owner, for a caller who may edit
-- both series.
CREATE FUNCTION calendar_move_answers(
    source UUID, target UUID, at TIMESTAMP WITH TIME ZONE, shift INTERVAL, zone TEXT
) RETURNS INTEGER LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    moved INTEGER;
BEGIN
    IF NOT app_is_system() AND (
        SELECT count(*) FROM events e
        WHERE e.id IN (source, target)
          AND (e.community_id IN (SELECT app_admin_communities())
               OR (e.created_by = app_current_user_id() AND e.community_id IN (SELECT app_member_communities())))
    ) <> (CASE WHEN source = target THEN 1 ELSE 2 END)
    OR (SELECT count(DISTINCT community_id) FROM events WHERE id IN (source, target)) <> 1 THEN
        RAISE EXCEPTION 'not allowed to move answers between these events' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Two steps: a shift by a whole period would otherwise move one answer onto the key of
    -- the next before that one has moved (the unique index is checked row by row).
    UPDATE rsvps SET recurrence_id = recurrence_id + INTERVAL '5000 years'
    WHERE event_id = source AND recurrence_id >= at;
    UPDATE rsvps
    SET event_id = target,
        recurrence_id = (((recurrence_id - INTERVAL '5000 years') AT TIME ZONE zone) + shift) AT TIME ZONE zone
    WHERE event_id = source AND recurrence_id >= at + INTERVAL '5000 years';
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END $$;

-- calendar feeds ----------------------------------------------------------------------------
-- A secret URL a calendar app polls: the user's events in one community, or in all of them.
-- Only the token's SHA-256 is kept.
CREATE TABLE calendar_feeds (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    user_id UUID NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    community_id UUID REFERENCES communities(id) ON DELETE CASCADE,
    token_hash CHAR(64) NOT NULL UNIQUE,
    created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT NOW(),
    last_used_at TIMESTAMP WITH TIME ZONE,
    revoked_at TIMESTAMP WITH TIME ZONE
);
CREATE INDEX idx_calendar_feeds_user ON calendar_feeds(user_id, created_at);
ALTER TABLE calendar_feeds ENABLE ROW LEVEL SECURITY;
CREATE POLICY calendar_feeds_owner ON calendar_feeds FOR ALL
    USING (app_is_system() OR user_id = app_current_user_id())
    WITH CHECK (app_is_system() OR user_id = app_current_user_id());
