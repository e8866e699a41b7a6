-- The ledger's wall and triggers tightened (issue 23, after review of 0035).
--
-- 1. A split copies its transaction's payer, currency and liveness under a share lock on the
--    transaction, so a concurrent change to the transaction (which copies them onto the
--    splits it can see) waits for the new split, or the split for it: no split keeps a stale
--    copy, and the balances stay equal to ledger_recomputed.
-- 2. A split belongs to a current member, and a live transaction's splits add up to its total
--    when its transaction commits (a deferred check), whoever writes them.
-- 3. Splits keep the order their members were listed in, so a new total split again gives
--    the leftover units as the first split did.
-- 4. No balance or pair reaches the one bigint without a negation (-2^63).
-- 5. A revision is written only for the revision the thing is at now: nobody writes one ahead
--    (which would break the next change) or behind.
-- 6. Only the member changes their own payment handles.

CREATE OR REPLACE FUNCTION splits_from_transaction() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    SELECT t.community_id, t.currency, t.paid_by, t.deleted_at IS NULL
    INTO NEW.community_id, NEW.currency, NEW.payer_id, NEW.live
    FROM transactions t WHERE t.id = NEW.transaction_id
    FOR SHARE;
    RETURN NEW;
END $$;

ALTER TABLE splits ADD COLUMN position smallint NOT NULL DEFAULT 0;

ALTER POLICY splits_write ON splits
    WITH CHECK (app_is_system() OR EXISTS (
        SELECT 1 FROM transactions t WHERE t.id = splits.transaction_id
          AND (t.created_by = app_current_user_id()
               OR t.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
          AND EXISTS (SELECT 1 FROM members m WHERE m.community_id = t.community_id
                      AND m.user_id = splits.user_id AND m.left_at IS NULL)));

-- A live transaction's splits add up to its total, checked when the transaction commits.
CREATE FUNCTION splits_add_up() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    subject uuid;
    total bigint;
    split_sum numeric;
BEGIN
    IF TG_TABLE_NAME = 'transactions' THEN
        subject := NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        subject := OLD.transaction_id;
    ELSE
        subject := NEW.transaction_id;
    END IF;
    SELECT t.total_amount INTO total FROM transactions t WHERE t.id = subject AND t.deleted_at IS NULL;
    IF NOT FOUND THEN RETURN NULL; END IF;
    SELECT coalesce(sum(s.amount), 0) INTO split_sum FROM splits s WHERE s.transaction_id = subject;
    IF split_sum <> total THEN
        RAISE EXCEPTION 'the splits of transaction % add up to %, not its total %', subject, split_sum, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER splits_add_up AFTER INSERT OR UPDATE OR DELETE ON splits
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION splits_add_up();
CREATE CONSTRAINT TRIGGER transactions_add_up AFTER INSERT OR UPDATE OF total_amount, deleted_at ON transactions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION splits_add_up();

ALTER TABLE ledger_balances ADD CONSTRAINT ledger_balances_negatable CHECK (net > -9223372036854775808);
ALTER TABLE ledger_pairs ADD CONSTRAINT ledger_pairs_negatable CHECK (amount > -9223372036854775808);

ALTER POLICY finance_revisions_write ON finance_revisions
    WITH CHECK (app_is_system() OR (
        changed_by = app_current_user_id()
        AND CASE subject_kind
            WHEN 'transaction' THEN EXISTS (
                SELECT 1 FROM transactions t WHERE t.id = finance_revisions.subject_id
                  AND t.community_id = finance_revisions.community_id
                  AND t.revision = finance_revisions.revision
                  AND (t.created_by = app_current_user_id()
                       OR t.community_id = ANY ((SELECT app_admin_community_ids())::uuid[])))
            ELSE EXISTS (
                SELECT 1 FROM dues d WHERE d.id = finance_revisions.subject_id
                  AND d.community_id = finance_revisions.community_id
                  AND d.revision = finance_revisions.revision
                  AND d.community_id = ANY ((SELECT app_admin_community_ids())::uuid[]))
        END));

CREATE FUNCTION members_own_payment_handles() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF app_trusted_writer(TG_RELID) OR NEW.user_id = app_current_user_id() THEN RETURN NEW; END IF;
    RAISE EXCEPTION 'only the member changes their payment handles' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER members_payment_handles BEFORE UPDATE OF payment_handles ON members
    FOR EACH ROW WHEN (OLD.payment_handles IS DISTINCT FROM NEW.payment_handles)
    EXECUTE FUNCTION members_own_payment_handles();
