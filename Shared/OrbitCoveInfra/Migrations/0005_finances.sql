-- The data-model seed, as written: finances.
-- TRANSACTIONS
-- ============================================
CREATE TABLE transactions (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    community_id UUID NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    created_by UUID NOT NULL REFERENCES users(id),
    type transaction_type NOT NULL,
    description VARCHAR(500) NOT NULL,
    total_amount INTEGER NOT NULL, -- cents
    currency VARCHAR(3) DEFAULT 'USD',
    paid_by UUID NOT NULL REFERENCES users(id),
    category expense_category DEFAULT 'other',
    receipt_url VARCHAR(500),
    linked_event_id UUID REFERENCES events(id),
    transaction_date DATE NOT NULL,
    created_at TIMESTAMP WITH TIME ZONE DEFAULT NOW(),
    updated_at TIMESTAMP WITH TIME ZONE DEFAULT NOW(),
    deleted_at TIMESTAMP WITH TIME ZONE
);

CREATE INDEX idx_transactions_community ON transactions(community_id, created_at DESC) WHERE deleted_at IS NULL;

-- ============================================
-- SPLITS
-- ============================================
CREATE TABLE splits (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    transaction_id UUID NOT NULL REFERENCES transactions(id) ON DELETE CASCADE,
    user_id UUID NOT NULL REFERENCES users(id),
    amount INTEGER NOT NULL, -- cents
    is_settled BOOLEAN DEFAULT FALSE,
    settled_at TIMESTAMP WITH TIME ZONE,
    settled_via VARCHAR(50)
);

CREATE INDEX idx_splits_transaction ON splits(transaction_id);
CREATE INDEX idx_splits_user_unsettled ON splits(user_id) WHERE is_settled = FALSE;

-- ============================================
-- DUES
-- ============================================
CREATE TABLE dues (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    community_id UUID NOT NULL REFERENCES communities(id) ON DELETE CASCADE,
    name VARCHAR(200) NOT NULL,
    amount INTEGER NOT NULL, -- cents
    due_date DATE NOT NULL,
    is_active BOOLEAN DEFAULT TRUE,
    created_by UUID NOT NULL REFERENCES users(id),
    created_at TIMESTAMP WITH TIME ZONE DEFAULT NOW()
);

CREATE INDEX idx_dues_community ON dues(community_id) WHERE is_active = TRUE;

-- ============================================
-- DUES PAYMENTS
-- ============================================
CREATE TABLE dues_payments (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    dues_id UUID NOT NULL REFERENCES dues(id) ON DELETE CASCADE,
    user_id UUID NOT NULL REFERENCES users(id),
    amount_paid INTEGER NOT NULL, -- cents
    paid_at TIMESTAMP WITH TIME ZONE DEFAULT NOW(),
    recorded_by UUID NOT NULL REFERENCES users(id),
    payment_method VARCHAR(50),
    notes TEXT
);

CREATE INDEX idx_dues_payments_dues ON dues_payments(dues_id);

-- ============================================
