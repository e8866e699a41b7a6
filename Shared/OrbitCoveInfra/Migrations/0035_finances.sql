-- Finances (issue 23): expenses and their splits, settlements, balances kept as rows change,
-- revisions members can read, and dues with payments, waivers and amounts over time, on the
-- seed's tables from 0005.
--
-- The ledger. An expense is a `transactions` row (type expense) paid by one member and split
-- among members (`splits`, one row per member, summing to the total). A settlement is a
-- `transactions` row of type settlement: `paid_by` paid `paid_to`, with one split for the payee
-- of the whole amount, so every transaction says the same thing: each split's member owes
-- the payer their split. Balances follow from the split rows alone: each split row carries
-- its transaction's community, currency and payer and whether the transaction is live
-- (not deleted), set from the transaction by triggers, so a trigger on `splits` can apply a
-- row's effect (and undo it) without reading anything else, even while a cascade removes its
-- transaction.
--
-- Kept, not summed per request: `ledger_balances` (each member's net per currency: positive,
-- they are owed) and `ledger_pairs` (who owes whom, unsimplified, one row per pair of members
-- and currency) change in the same transaction as the split rows, under a lock on the
-- community's ledger (taken before the first balance row, so two writers never deadlock on
-- them), and always equal `ledger_recomputed` over the rows (FinanceTests compares them after
-- many clients write at once).

-- Transactions ---------------------------------------------------------------------------------
DROP INDEX idx_transactions_community;
ALTER TABLE transactions
    ALTER COLUMN total_amount TYPE bigint,
    ALTER COLUMN currency SET NOT NULL,
    ALTER COLUMN category SET NOT NULL,
    ALTER COLUMN created_at SET NOT NULL,
    ALTER COLUMN updated_at SET NOT NULL,
    ADD COLUMN paid_to uuid REFERENCES users(id),
    ADD COLUMN split_method text,
    ADD COLUMN settlement_method text,
    ADD COLUMN revision integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT transactions_amount CHECK (total_amount BETWEEN 1 AND 1000000000000000),
    ADD CONSTRAINT transactions_currency CHECK (currency ~ '^[A-Z]{3}$'),
    ADD CONSTRAINT transactions_description CHECK (char_length(description) <= 500),
    ADD CONSTRAINT transactions_split_method CHECK (split_method IN ('equal', 'exact', 'percentages', 'shares')),
    ADD CONSTRAINT transactions_settlement_method
        CHECK (settlement_method IN ('cash', 'bank_transfer', 'venmo', 'paypal', 'other')),
    ADD CONSTRAINT transactions_shape CHECK (
        CASE type
            WHEN 'settlement' THEN paid_to IS NOT NULL AND paid_to <> paid_by AND settlement_method IS NOT NULL
                                   AND split_method IS NULL
            WHEN 'expense' THEN paid_to IS NULL AND settlement_method IS NULL AND split_method IS NOT NULL
            ELSE FALSE
        END);
-- The ledger's order (newest first, by id within a microsecond), and its filters.
CREATE INDEX transactions_ledger ON transactions (community_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX transactions_paid_by ON transactions (paid_by);
CREATE INDEX transactions_linked_event ON transactions (linked_event_id) WHERE linked_event_id IS NOT NULL;
-- A transaction changes hands never, and its type never.
DROP TRIGGER transactions_guard ON transactions;
CREATE TRIGGER transactions_guard BEFORE UPDATE ON transactions
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'community_id', 'created_by', 'created_at', 'type');

-- Splits ---------------------------------------------------------------------------------------
DROP INDEX idx_splits_user_unsettled;
ALTER TABLE splits
    ALTER COLUMN amount TYPE bigint,
    ADD COLUMN share bigint,
    ADD COLUMN community_id uuid REFERENCES communities(id) ON DELETE CASCADE,
    ADD COLUMN currency text,
    ADD COLUMN payer_id uuid,
    ADD COLUMN live boolean NOT NULL DEFAULT TRUE,
    ADD CONSTRAINT splits_once UNIQUE (transaction_id, user_id),
    ADD CONSTRAINT splits_amount CHECK (amount >= 0);
UPDATE splits s SET community_id = t.community_id, currency = t.currency, payer_id = t.paid_by,
                    live = t.deleted_at IS NULL
FROM transactions t WHERE t.id = s.transaction_id;
ALTER TABLE splits ALTER COLUMN community_id SET NOT NULL, ALTER COLUMN currency SET NOT NULL,
                   ALTER COLUMN payer_id SET NOT NULL;
DROP INDEX idx_splits_transaction;
-- A member's items, newest first, for the balances' explanations and the ledger's filter.
CREATE INDEX splits_member ON splits (community_id, user_id) WHERE live;

-- A split takes its transaction's community, currency, payer and liveness, whatever was written.
CREATE FUNCTION splits_from_transaction() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    SELECT t.community_id, t.currency, t.paid_by, t.deleted_at IS NULL
    INTO NEW.community_id, NEW.currency, NEW.payer_id, NEW.live
    FROM transactions t WHERE t.id = NEW.transaction_id;
    RETURN NEW;
END $$;
CREATE TRIGGER splits_from_transaction BEFORE INSERT ON splits
    FOR EACH ROW EXECUTE FUNCTION splits_from_transaction();
-- Only the owner's triggers move those copies; nobody moves a split to another transaction or
-- member (an edit replaces the splits).
CREATE TRIGGER splits_guard BEFORE UPDATE ON splits
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns(
        'id', 'transaction_id', 'user_id', 'community_id', 'currency', 'payer_id', 'live');

-- A transaction's new payer, currency or deletion reaches its splits (and so the balances).
CREATE FUNCTION transactions_to_splits() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    UPDATE splits SET payer_id = NEW.paid_by, currency = NEW.currency, live = NEW.deleted_at IS NULL
    WHERE transaction_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER transactions_to_splits AFTER UPDATE OF paid_by, currency, deleted_at ON transactions
    FOR EACH ROW WHEN (OLD.paid_by IS DISTINCT FROM NEW.paid_by OR OLD.currency IS DISTINCT FROM NEW.currency
                       OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION transactions_to_splits();

-- Balances -------------------------------------------------------------------------------------
CREATE TABLE ledger_balances (
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    currency text NOT NULL,
    user_id uuid NOT NULL REFERENCES users(id),
    net bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (community_id, currency, user_id)
);
-- One row per pair of members (low_user < high_user) and currency: positive, low_user owes
-- high_user that much; negative, the other way round.
CREATE TABLE ledger_pairs (
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    currency text NOT NULL,
    low_user uuid NOT NULL REFERENCES users(id),
    high_user uuid NOT NULL REFERENCES users(id),
    amount bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (community_id, currency, low_user, high_user),
    CHECK (low_user < high_user)
);
ALTER TABLE ledger_balances ENABLE ROW LEVEL SECURITY;
ALTER TABLE ledger_pairs ENABLE ROW LEVEL SECURITY;
-- Read by the community's members; written only by the owner's triggers below.
CREATE POLICY ledger_balances_read ON ledger_balances FOR SELECT
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
CREATE POLICY ledger_pairs_read ON ledger_pairs FOR SELECT
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));

-- Serialises the changes to one community's balances until the transaction ends.
CREATE FUNCTION ledger_lock(community uuid) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('ledger:' || community::text, 0))
$$;

-- Applies (sign 1) or undoes (sign -1) one split: `debtor` owes `payer` `amount`.
CREATE FUNCTION ledger_apply(community uuid, cur text, payer uuid, debtor uuid, amount bigint, sign integer)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    delta bigint := amount * sign;
BEGIN
    IF payer = debtor OR amount = 0 THEN RETURN; END IF;
    PERFORM ledger_lock(community);
    INSERT INTO ledger_balances AS b (community_id, currency, user_id, net)
    VALUES (community, cur, payer, delta), (community, cur, debtor, -delta)
    ON CONFLICT (community_id, currency, user_id) DO UPDATE SET net = b.net + excluded.net;
    INSERT INTO ledger_pairs AS p (community_id, currency, low_user, high_user, amount)
    VALUES (community, cur, least(payer, debtor), greatest(payer, debtor),
            CASE WHEN debtor < payer THEN delta ELSE -delta END)
    ON CONFLICT (community_id, currency, low_user, high_user) DO UPDATE SET amount = p.amount + excluded.amount;
END $$;
REVOKE EXECUTE ON FUNCTION ledger_apply(uuid, text, uuid, uuid, bigint, integer) FROM PUBLIC;

CREATE FUNCTION splits_to_balances() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.live THEN
        PERFORM ledger_apply(OLD.community_id, OLD.currency, OLD.payer_id, OLD.user_id, OLD.amount, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.live THEN
        PERFORM ledger_apply(NEW.community_id, NEW.currency, NEW.payer_id, NEW.user_id, NEW.amount, 1);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER splits_to_balances AFTER INSERT OR UPDATE OR DELETE ON splits
    FOR EACH ROW EXECUTE FUNCTION splits_to_balances();

-- What the balances would be if summed over the rows now: the test's reference.
CREATE FUNCTION ledger_recomputed(community uuid)
RETURNS TABLE (currency text, user_id uuid, net bigint)
LANGUAGE sql STABLE AS $$
    SELECT s.currency, x.user_id, sum(x.amount)::bigint
    FROM splits s
    JOIN transactions t ON t.id = s.transaction_id AND t.deleted_at IS NULL
    CROSS JOIN LATERAL (VALUES (t.paid_by, s.amount), (s.user_id, -s.amount)) AS x(user_id, amount)
    WHERE t.community_id = community AND s.user_id <> t.paid_by
    GROUP BY s.currency, x.user_id
$$;

-- A split added, changed or removed logs its transaction as changed, once per statement.
CREATE FUNCTION splits_log_transaction() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    INSERT INTO change_log (community_id, entity_kind, entity_id, operation)
    SELECT DISTINCT t.community_id, 'transaction', t.id, 'update'
    FROM changed c JOIN transactions t ON t.id = c.transaction_id AND t.deleted_at IS NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER splits_log_insert AFTER INSERT ON splits REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION splits_log_transaction();
CREATE TRIGGER splits_log_update AFTER UPDATE ON splits REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION splits_log_transaction();
CREATE TRIGGER splits_log_delete AFTER DELETE ON splits REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION splits_log_transaction();

-- The second wall for splits: read with their transaction; written by its creator or an admin.
DROP POLICY splits_members ON splits;
CREATE POLICY splits_read ON splits FOR SELECT
    USING (app_is_system() OR EXISTS (SELECT 1 FROM transactions t WHERE t.id = splits.transaction_id));
CREATE POLICY splits_write ON splits FOR INSERT
    WITH CHECK (app_is_system() OR EXISTS (
        SELECT 1 FROM transactions t WHERE t.id = splits.transaction_id
          AND (t.created_by = app_current_user_id()
               OR t.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))));
CREATE POLICY splits_change ON splits FOR UPDATE
    USING (app_is_system() OR EXISTS (
        SELECT 1 FROM transactions t WHERE t.id = splits.transaction_id
          AND (t.created_by = app_current_user_id()
               OR t.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))))
    WITH CHECK (app_is_system() OR EXISTS (SELECT 1 FROM transactions t WHERE t.id = splits.transaction_id));
CREATE POLICY splits_delete ON splits FOR DELETE
    USING (app_is_system() OR EXISTS (
        SELECT 1 FROM transactions t WHERE t.id = splits.transaction_id
          AND (t.created_by = app_current_user_id()
               OR t.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))));

-- Policies of transactions in the cheap form (0024), the same rules as 0019.
ALTER POLICY transactions_read ON transactions
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
ALTER POLICY transactions_create ON transactions
    WITH CHECK (app_is_system() OR (created_by = app_current_user_id()
                AND community_id = ANY ((SELECT app_member_community_ids())::uuid[])));
ALTER POLICY transactions_change ON transactions
    USING (app_is_system() OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[])
           OR (created_by = app_current_user_id()
               AND community_id = ANY ((SELECT app_member_community_ids())::uuid[])))
    WITH CHECK (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
ALTER POLICY transactions_delete ON transactions
    USING (app_is_system() OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[])
           OR (created_by = app_current_user_id()
               AND community_id = ANY ((SELECT app_member_community_ids())::uuid[])));

-- Revisions: what every change did, for the members ---------------------------------------------
-- One row per change of a transaction or dues, with the thing as it stood after the change
-- (`snapshot`; a deletion repeats the last state). The audit log is the admins'; this is what a
-- member reads to see who changed an amount, when, from what to what.
CREATE TABLE finance_revisions (
    id uuid PRIMARY KEY DEFAULT uuid_generate_v4(),
    community_id uuid NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    subject_kind text NOT NULL CHECK (subject_kind IN ('transaction', 'dues')),
    subject_id uuid NOT NULL,
    revision integer NOT NULL,
    action text NOT NULL CHECK (action IN ('created', 'edited', 'deleted')),
    changed_by uuid NOT NULL REFERENCES users(id),
    changed_at timestamptz NOT NULL DEFAULT NOW(),
    snapshot jsonb NOT NULL,
    UNIQUE (subject_id, revision)
);
ALTER TABLE finance_revisions ENABLE ROW LEVEL SECURITY;
CREATE POLICY finance_revisions_read ON finance_revisions FOR SELECT
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
-- Written by whoever may change the thing, as themselves; never changed or removed.
CREATE POLICY finance_revisions_write ON finance_revisions FOR INSERT
    WITH CHECK (app_is_system() OR (
        changed_by = app_current_user_id()
        AND CASE subject_kind
            WHEN 'transaction' THEN EXISTS (
                SELECT 1 FROM transactions t WHERE t.id = finance_revisions.subject_id
                  AND t.community_id = finance_revisions.community_id
                  AND (t.created_by = app_current_user_id()
                       OR t.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])))
            ELSE EXISTS (
                SELECT 1 FROM dues d WHERE d.id = finance_revisions.subject_id
                  AND d.community_id = finance_revisions.community_id
                  AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
        END));

-- Dues -----------------------------------------------------------------------------------------
DROP INDEX idx_dues_community;
ALTER TABLE dues
    ALTER COLUMN amount TYPE bigint,
    ALTER COLUMN is_active SET NOT NULL,
    ALTER COLUMN created_at SET NOT NULL,
    ADD COLUMN currency text NOT NULL DEFAULT 'USD',
    ADD COLUMN description text,
    ADD COLUMN recurrence text NOT NULL DEFAULT 'none',
    -- NULL: every member, as members come and go; otherwise those users.
    ADD COLUMN member_ids uuid[],
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT NOW(),
    ADD COLUMN deleted_at timestamptz,
    ADD COLUMN revision integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT dues_amount CHECK (amount BETWEEN 1 AND 1000000000000000),
    ADD CONSTRAINT dues_currency CHECK (currency ~ '^[A-Z]{3}$'),
    ADD CONSTRAINT dues_recurrence CHECK (recurrence IN ('none', 'monthly', 'yearly')),
    ADD CONSTRAINT dues_name CHECK (char_length(name) BETWEEN 1 AND 200),
    ADD CONSTRAINT dues_description CHECK (char_length(description) <= 2000);
CREATE INDEX dues_community ON dues (community_id, due_date, id) WHERE deleted_at IS NULL;

-- What each period owes: an amount applies from the period it was set for on, so changing it
-- never rewrites what earlier periods owed.
CREATE TABLE dues_amounts (
    dues_id uuid NOT NULL REFERENCES dues(id) ON DELETE CASCADE,
    effective_from date NOT NULL,
    amount bigint NOT NULL CHECK (amount BETWEEN 1 AND 1000000000000000),
    PRIMARY KEY (dues_id, effective_from)
);
INSERT INTO dues_amounts (dues_id, effective_from, amount) SELECT id, due_date, amount FROM dues;

ALTER TABLE dues_payments
    ALTER COLUMN amount_paid TYPE bigint,
    ALTER COLUMN paid_at SET NOT NULL,
    ADD COLUMN period date,
    ADD CONSTRAINT dues_payments_amount CHECK (amount_paid BETWEEN 1 AND 1000000000000000),
    ADD CONSTRAINT dues_payments_method
        CHECK (payment_method IN ('cash', 'bank_transfer', 'venmo', 'paypal', 'other')),
    ADD CONSTRAINT dues_payments_note CHECK (char_length(notes) <= 500);
UPDATE dues_payments p SET period = d.due_date FROM dues d WHERE d.id = p.dues_id;
ALTER TABLE dues_payments ALTER COLUMN period SET NOT NULL;
DROP INDEX idx_dues_payments_dues;
CREATE INDEX dues_payments_period ON dues_payments (dues_id, period, user_id);

CREATE TABLE dues_waivers (
    dues_id uuid NOT NULL REFERENCES dues(id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users(id),
    period date NOT NULL,
    waived_by uuid NOT NULL REFERENCES users(id),
    waived_at timestamptz NOT NULL DEFAULT NOW(),
    reason text CHECK (char_length(reason) <= 500),
    PRIMARY KEY (dues_id, period, user_id)
);

-- The second wall for dues' rows: read with their dues, written by the community's admins.
DROP POLICY dues_payments_members ON dues_payments;
CREATE POLICY dues_payments_read ON dues_payments FOR SELECT
    USING (app_is_system() OR EXISTS (SELECT 1 FROM dues d WHERE d.id = dues_payments.dues_id));
CREATE POLICY dues_payments_write ON dues_payments FOR INSERT
    WITH CHECK (app_is_system() OR (recorded_by = app_current_user_id() AND EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_payments.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))));
CREATE POLICY dues_payments_change ON dues_payments FOR UPDATE
    USING (app_is_system() OR EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_payments.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])))
    WITH CHECK (app_is_system() OR EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_payments.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])));
CREATE POLICY dues_payments_delete ON dues_payments FOR DELETE
    USING (app_is_system() OR EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_payments.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])));
CREATE TRIGGER dues_payments_guard BEFORE UPDATE ON dues_payments
    FOR EACH ROW EXECUTE FUNCTION guard_immutable_columns('id', 'dues_id', 'user_id', 'recorded_by');

ALTER TABLE dues_waivers ENABLE ROW LEVEL SECURITY;
ALTER TABLE dues_amounts ENABLE ROW LEVEL SECURITY;
CREATE POLICY dues_waivers_read ON dues_waivers FOR SELECT
    USING (app_is_system() OR EXISTS (SELECT 1 FROM dues d WHERE d.id = dues_waivers.dues_id));
CREATE POLICY dues_amounts_read ON dues_amounts FOR SELECT
    USING (app_is_system() OR EXISTS (SELECT 1 FROM dues d WHERE d.id = dues_amounts.dues_id));
CREATE POLICY dues_waivers_admins ON dues_waivers FOR ALL
    USING (app_is_system() OR EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_waivers.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])))
    WITH CHECK (app_is_system() OR (waived_by = app_current_user_id() AND EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_waivers.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))));
CREATE POLICY dues_amounts_admins ON dues_amounts FOR ALL
    USING (app_is_system() OR EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_amounts.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])))
    WITH CHECK (app_is_system() OR EXISTS (
        SELECT 1 FROM dues d WHERE d.id = dues_amounts.dues_id
          AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])));

-- Policies of dues in the cheap form (0024), the same rules as 0019.
ALTER POLICY dues_read ON dues
    USING (app_is_system() OR community_id = ANY ((SELECT app_member_community_ids())::uuid[]));
ALTER POLICY dues_admins ON dues
    WITH CHECK (app_is_system() OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]));
ALTER POLICY dues_change ON dues
    USING (app_is_system() OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
    WITH CHECK (app_is_system() OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]));
ALTER POLICY dues_delete ON dues
    USING (app_is_system() OR community_id = ANY ((SELECT app_admin_community_ids())::uuid[]));

-- Dues sync: the dues row, and a payment, waiver or amount change logs its dues.
CREATE TRIGGER trigger_change_log AFTER INSERT OR UPDATE OR DELETE ON dues
    FOR EACH ROW EXECUTE FUNCTION log_community_change('dues');
CREATE FUNCTION dues_log_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    INSERT INTO change_log (community_id, entity_kind, entity_id, operation)
    SELECT DISTINCT d.community_id, 'dues', d.id, 'update'
    FROM changed c JOIN dues d ON d.id = c.dues_id AND d.deleted_at IS NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER dues_payments_log_insert AFTER INSERT ON dues_payments REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION dues_log_change();
CREATE TRIGGER dues_payments_log_update AFTER UPDATE ON dues_payments REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION dues_log_change();
CREATE TRIGGER dues_payments_log_delete AFTER DELETE ON dues_payments REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION dues_log_change();
CREATE TRIGGER dues_waivers_log_insert AFTER INSERT ON dues_waivers REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION dues_log_change();
CREATE TRIGGER dues_waivers_log_delete AFTER DELETE ON dues_waivers REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION dues_log_change();

-- Payment handles: how a member likes to be paid, per community ({"venmo": …, "paypal": …}).
ALTER TABLE members ADD COLUMN payment_handles jsonb NOT NULL DEFAULT '{}';

-- Notifications: an expense one owes part of, a payment one received.
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'expense_added';
ALTER TYPE notification_type ADD VALUE IF NOT EXISTS 'settlement_received';
