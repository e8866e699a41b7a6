-- Reminders (issue 25): shared care reminders with their occurrences, and the schedule every
-- kind of reminder fires from. Due times live here, not in the broker, so they can move and be
-- cancelled; the reminders service keeps a horizon of them filled and fires each row once.

-- A shared care reminder ("walk the dog", "give Mia her inhaler"): a rule (RRULE) and a time of
-- day in the community's zone, optionally someone it is assigned to, and how many minutes an
-- undone occurrence waits before everyone hears of it.
CREATE TABLE care_reminders (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    notes text CHECK (char_length(notes) <= 2000),
    recurrence_rule text NOT NULL CHECK (char_length(recurrence_rule) BETWEEN 1 AND 500),
    time_of_day time NOT NULL,
    starts_on date NOT NULL,
    assignee_id uuid REFERENCES users(id) ON DELETE SET NULL,
    escalate_after_minutes integer CHECK (escalate_after_minutes BETWEEN 1 AND 10080),
    created_by uuid REFERENCES users(id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    sequence integer NOT NULL DEFAULT 0
);
CREATE INDEX care_reminders_community ON care_reminders (community_id, created_at, id) WHERE deleted_at IS NULL;

-- One occurrence per reminder and local date, generated ahead. The first member to mark it
-- done or skipped wins (compare-and-set on status); snoozing moves when it is due again;
-- reassigning names who is told for this occurrence alone.
CREATE TABLE care_occurrences (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    reminder_id uuid NOT NULL REFERENCES care_reminders(id) ON DELETE CASCADE,
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    local_date date NOT NULL,
    due_at timestamptz NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'skipped')),
    completed_by uuid REFERENCES users(id) ON DELETE SET NULL,
    completed_at timestamptz,
    snoozed_until timestamptz,
    snoozes integer NOT NULL DEFAULT 0,
    assignee_id uuid REFERENCES users(id) ON DELETE SET NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (reminder_id, local_date),
    CHECK ((status = 'pending') = (completed_at IS NULL))
);
CREATE INDEX care_occurrences_due ON care_occurrences (reminder_id, due_at);
-- Sync pages a community's occurrences by id.
CREATE INDEX care_occurrences_community ON care_occurrences (community_id, id);

-- What fires, when: one row per (kind, subject, occurrence, step), fired once. `subject_id` is
-- the event (series), dues or care reminder; `occurrence` the instance's original start, the
-- dues period or the care occurrence's local date; `step` the lead in minutes of an event
-- reminder, the days from the due date of a dues reminder, which nudge of an event, or the
-- snooze count of a care occurrence. Who hears it is decided when it fires.
CREATE TABLE reminder_schedule (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('event_reminder', 'rsvp_nudge', 'rsvp_summary', 'dues_reminder',
                                       'care_due', 'care_escalation')),
    subject_id uuid NOT NULL,
    occurrence text NOT NULL,
    step integer NOT NULL DEFAULT 0,
    due_at timestamptz NOT NULL,
    -- An event's instance start (as it is now), for the words.
    instance_start timestamptz,
    fired_at timestamptz,
    -- sent: a message went out; nobody: its reason held for no one; gone: its reason went away.
    -- failed: working out its reason failed (its error is logged); it is not tried again.
    outcome text CHECK (outcome IN ('sent', 'nobody', 'gone', 'failed')),
    recipients integer,
    UNIQUE (kind, subject_id, occurrence, step),
    CHECK ((fired_at IS NULL) = (outcome IS NULL))
);
CREATE INDEX reminder_schedule_due ON reminder_schedule (due_at) WHERE fired_at IS NULL;
CREATE INDEX reminder_schedule_subject ON reminder_schedule (subject_id) WHERE fired_at IS NULL;
CREATE INDEX reminder_schedule_fired ON reminder_schedule (fired_at) WHERE fired_at IS NOT NULL;

-- What the horizon job keeps filled: each subject and how far ahead its rows exist.
CREATE TABLE reminder_subjects (
    kind text NOT NULL CHECK (kind IN ('event', 'dues', 'care')),
    subject_id uuid NOT NULL,
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    filled_until timestamptz NOT NULL DEFAULT '-infinity',
    -- An event's version and its overrides' when last planned: a message about a community's
    -- calendar plans again only the events whose rows changed.
    planned_version text,
    -- When it was last planned: a care reminder or occurrence a member changed since (whose
    -- planning after the commit did not happen) is planned again by the next pass.
    planned_at timestamptz NOT NULL DEFAULT '-infinity',
    PRIMARY KEY (kind, subject_id)
);
CREATE INDEX reminder_subjects_filled ON reminder_subjects (filled_until);

-- The wall. Care reminders and occurrences are every member's to read; any member creates
-- (as themselves) and edits a reminder; only its creator or an admin deletes it (a soft
-- delete, guarded below). Occurrences are generated by the system; members change their
-- status, snooze and assignee. The schedule and the subjects are the system's alone.
ALTER TABLE care_reminders ENABLE ROW LEVEL SECURITY;
ALTER TABLE care_occurrences ENABLE ROW LEVEL SECURITY;
ALTER TABLE reminder_schedule ENABLE ROW LEVEL SECURITY;
ALTER TABLE reminder_subjects ENABLE ROW LEVEL SECURITY;

CREATE POLICY care_reminders_read ON care_reminders FOR SELECT
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
CREATE POLICY care_reminders_create ON care_reminders FOR INSERT
    WITH CHECK (app_is_system() OR (
        created_by = app_current_user_id() AND deleted_at IS NULL
        AND community_id = ANY ((SELECT app_member_community_ids())::uuid[])
        AND (assignee_id IS NULL OR EXISTS (
            SELECT 1 FROM members m WHERE m.community_id = care_reminders.community_id
              AND m.user_id = care_reminders.assignee_id AND m.left_at IS NULL))));
-- An assignee named by an update must be a member (the guard below): checked when it changes,
-- so a reminder whose assignee has since left can still be edited and deleted.
CREATE POLICY care_reminders_change ON care_reminders FOR UPDATE
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]))
    WITH CHECK (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
CREATE POLICY care_reminders_delete ON care_reminders FOR DELETE USING (app_is_system());

-- Whether `person` is a current member of `community`, for the guards' assignee checks.
CREATE FUNCTION care_assignable(community uuid, person uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT person IS NULL OR EXISTS (
        SELECT 1 FROM members m WHERE m.community_id = community AND m.user_id = person AND m.left_at IS NULL)
$$;

-- A member's new reminder starts as new: its times and version are the database's.
CREATE FUNCTION care_reminders_new() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT app_is_system() THEN
        NEW.created_at := now();
        NEW.updated_at := now();
        NEW.sequence := 0;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER care_reminders_new BEFORE INSERT ON care_reminders
    FOR EACH ROW EXECUTE FUNCTION care_reminders_new();

CREATE FUNCTION care_reminders_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF app_is_system() THEN RETURN NEW; END IF;
    IF NEW.community_id IS DISTINCT FROM OLD.community_id OR NEW.created_by IS DISTINCT FROM OLD.created_by
       OR NEW.created_at IS DISTINCT FROM OLD.created_at OR OLD.deleted_at IS NOT NULL THEN
        RAISE EXCEPTION 'a reminder keeps its community, creator and deletion' USING ERRCODE = '42501';
    END IF;
    IF NEW.assignee_id IS DISTINCT FROM OLD.assignee_id AND NOT care_assignable(NEW.community_id, NEW.assignee_id) THEN
        RAISE EXCEPTION 'a reminder is assigned to a member' USING ERRCODE = '42501';
    END IF;
    IF NEW.deleted_at IS NOT NULL AND OLD.created_by IS DISTINCT FROM app_current_user_id()
       AND NOT OLD.community_id = ANY (app_admin_community_ids()) THEN
        RAISE EXCEPTION 'only its creator or an admin deletes a reminder' USING ERRCODE = '42501';
    END IF;
    NEW.sequence := OLD.sequence + 1;
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;
CREATE TRIGGER care_reminders_guard BEFORE UPDATE ON care_reminders
    FOR EACH ROW EXECUTE FUNCTION care_reminders_guard();

CREATE POLICY care_occurrences_read ON care_occurrences FOR SELECT
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
CREATE POLICY care_occurrences_create ON care_occurrences FOR INSERT WITH CHECK (app_is_system());
CREATE POLICY care_occurrences_change ON care_occurrences FOR UPDATE
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]))
    WITH CHECK (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
CREATE POLICY care_occurrences_delete ON care_occurrences FOR DELETE USING (app_is_system());

-- What a member may do to an occurrence still pending, one thing at a time: mark it (as
-- themselves, now), snooze it once more (to within a week), or reassign it (to a member).
-- Where and when it falls is the system's, and what was marked stays as it was.
CREATE FUNCTION care_occurrences_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF app_is_system() THEN RETURN NEW; END IF;
    IF OLD.status <> 'pending'
       OR (NEW.reminder_id, NEW.community_id, NEW.local_date, NEW.due_at)
          IS DISTINCT FROM (OLD.reminder_id, OLD.community_id, OLD.local_date, OLD.due_at) THEN
        RAISE EXCEPTION 'a marked occurrence, and when any falls, are not a member''s to change'
            USING ERRCODE = '42501';
    END IF;
    IF NEW.status <> 'pending' THEN
        IF NEW.completed_by IS DISTINCT FROM app_current_user_id() THEN
            RAISE EXCEPTION 'an occurrence is marked by the member marking it' USING ERRCODE = '42501';
        END IF;
        NEW.completed_at := now();
    ELSIF (NEW.completed_by, NEW.completed_at) IS DISTINCT FROM (OLD.completed_by, OLD.completed_at) THEN
        RAISE EXCEPTION 'an occurrence is marked by the member marking it' USING ERRCODE = '42501';
    END IF;
    IF (NEW.snoozed_until, NEW.snoozes) IS DISTINCT FROM (OLD.snoozed_until, OLD.snoozes)
       AND NOT (NEW.snoozes = OLD.snoozes + 1 AND NEW.snoozed_until > now()
                AND NEW.snoozed_until <= now() + interval '7 days') THEN
        RAISE EXCEPTION 'a snooze is once more, to within a week' USING ERRCODE = '42501';
    END IF;
    IF NEW.assignee_id IS DISTINCT FROM OLD.assignee_id
       AND NOT care_assignable(NEW.community_id, NEW.assignee_id) THEN
        RAISE EXCEPTION 'an occurrence is assigned to a member' USING ERRCODE = '42501';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;
CREATE TRIGGER care_occurrences_guard BEFORE UPDATE ON care_occurrences
    FOR EACH ROW EXECUTE FUNCTION care_occurrences_guard();

CREATE POLICY reminder_schedule_system ON reminder_schedule FOR ALL
    USING (app_is_system()) WITH CHECK (app_is_system());
CREATE POLICY reminder_subjects_system ON reminder_subjects FOR ALL
    USING (app_is_system()) WITH CHECK (app_is_system());

-- Both travel in sync and the realtime stream: `reminder` and `reminder_occurrence`.
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE ON care_reminders
    FOR EACH ROW EXECUTE FUNCTION log_community_change('reminder');
CREATE TRIGGER trigger_change_log_delete AFTER DELETE ON care_reminders
    FOR EACH ROW EXECUTE FUNCTION log_community_change('reminder');
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE ON care_occurrences
    FOR EACH ROW EXECUTE FUNCTION log_community_change('reminder_occurrence');
CREATE TRIGGER trigger_change_log_delete AFTER DELETE ON care_occurrences
    FOR EACH ROW EXECUTE FUNCTION log_community_change('reminder_occurrence');

-- A member's change to a care reminder or an occurrence marks its subject for planning, in the
-- same transaction: the service plans it after the commit, and if that never happens (the
-- process died) the horizon's next pass finds the mark. The planner's own writes (as the
-- system) mark nothing.
CREATE FUNCTION care_needs_planning() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    subject uuid;
BEGIN
    IF NOT app_is_system() THEN
        -- TG_ARGV[0] names the column holding the reminder's id (each table's own).
        IF TG_ARGV[0] = 'id' THEN subject := NEW.id; ELSE subject := NEW.reminder_id; END IF;
        INSERT INTO reminder_subjects (kind, subject_id, community_id, filled_until)
        VALUES ('care', subject, NEW.community_id, '-infinity')
        ON CONFLICT (kind, subject_id) DO UPDATE SET filled_until = '-infinity';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER care_reminders_planning AFTER INSERT OR UPDATE ON care_reminders
    FOR EACH ROW EXECUTE FUNCTION care_needs_planning('id');
CREATE TRIGGER care_occurrences_planning AFTER UPDATE ON care_occurrences
    FOR EACH ROW EXECUTE FUNCTION care_needs_planning('reminder_id');
