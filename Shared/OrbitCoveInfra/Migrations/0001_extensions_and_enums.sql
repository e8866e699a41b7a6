-- The data-model seed, as written: extensions and enum types.
-- Enable UUID extension
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";

-- Enum types
CREATE TYPE member_role AS ENUM ('admin', 'member');
CREATE TYPE subscription_status AS ENUM ('free', 'active', 'past_due', 'canceled');
CREATE TYPE rsvp_status AS ENUM ('yes', 'no', 'maybe');
CREATE TYPE event_category AS ENUM ('practice', 'game', 'meeting', 'social', 'other');
CREATE TYPE post_type AS ENUM ('text', 'photo', 'announcement', 'poll', 'event_share');
CREATE TYPE reaction_type AS ENUM ('like', 'love', 'laugh', 'celebrate');
CREATE TYPE transaction_type AS ENUM ('expense', 'settlement', 'dues');
CREATE TYPE expense_category AS ENUM ('equipment', 'food', 'travel', 'dues', 'other');
CREATE TYPE media_type AS ENUM ('image', 'video', 'document');
CREATE TYPE notification_type AS ENUM ('event_reminder', 'new_post', 'mention', 'rsvp_request', 'payment_request');

