-- An answer belongs to one instance: a member cannot carry a confirmed yes from a quiet
-- instance of a series to a full one (0023's guard left recurrence_id free). Moving answers
-- between instances is calendar_move_answers' work, which runs as the owner and passes.
CREATE OR REPLACE FUNCTION guard_rsvp_place() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF app_trusted_writer(TG_RELID) THEN RETURN NEW; END IF;
    IF TG_OP = 'UPDATE' AND (NEW.waitlisted IS DISTINCT FROM OLD.waitlisted OR NEW.queued_at < OLD.queued_at
                             OR NEW.recurrence_id IS DISTINCT FROM OLD.recurrence_id) THEN
        RAISE EXCEPTION 'a place in line is given by calendar_place_answers' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'INSERT' AND NEW.waitlisted THEN
        RAISE EXCEPTION 'a place in line is given by calendar_place_answers' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.status = 'yes' AND (TG_OP = 'INSERT' OR OLD.status <> 'yes' OR NEW.plus_ones > OLD.plus_ones) THEN
        IF NEW.queued_at < now() THEN
            RAISE EXCEPTION 'a new yes joins the end of the line' USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.waitlisted := true;
    END IF;
    RETURN NEW;
END $$;
