-- Rules, version 2 (migration 018): the two pattern tests match without a
-- bounded repeat. queue_name_pattern() and worker_owner_id_pattern() stay
-- the contract's patterns, word for word (they are what an error's HINT
-- shows and what goclient's copy is checked against); only how a value is
-- tested against them changes.
--
-- Why: PostgreSQL's regular-expression engine builds the automaton of a
-- pattern's bounded repeat ({0,62}, {0,127}) one state per repetition and
-- rebuilds its DFA states on every match, so each test of a name against
-- the contract's pattern cost microseconds, more the longer the name: an
-- owner id 5.3 us at 14 characters, 13 at 25, 39 at 128; a 15-character
-- queue name 3 to 5; against 0.5 to 0.8 at any length for the same test
-- without the bounded repeat (migration 018's header gives the runs).
-- Every claim tested two names, every renewal and completion the owner id.
--
-- The test is the same language: for a pattern ^[A][B]{0,n}$ whose
-- bracket sets A and B hold ASCII characters only, a value matches it
-- exactly when it matches ^[A][B]*$ (then every character is one byte)
-- and has at most n + 1 bytes. The byte length is tested first (a value
-- longer than any name is refused without running the regex). NULL in,
-- NULL out, as before. sql/tests/25_rules.sql checks the answers against
-- the contract's patterns on every edge case; goclient's
-- TestGoCopiesOfTheRulesEqualTheDatabaseRules on 2,000 random names.
-- Everything else about them (inlined, no SECURITY DEFINER, no SET, the
-- grants) is as rules.sql says.

-- queue_name_is_well_formed: p_queue_name matches queue_name_pattern byte
-- for byte (COLLATE "C"). NULL in, NULL out. Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.queue_name_is_well_formed(p_queue_name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_queue_name) OPERATOR(pg_catalog.<=) 63
   AND (p_queue_name COLLATE "C") OPERATOR(pg_catalog.~) '^[a-z][a-z0-9_.:-]*$';

-- worker_owner_id_is_well_formed: p_worker_owner_id matches
-- worker_owner_id_pattern byte for byte (COLLATE "C"). NULL in, NULL out.
-- Takes no lock.
CREATE OR REPLACE FUNCTION durable_jobs.worker_owner_id_is_well_formed(p_worker_owner_id text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.octet_length(p_worker_owner_id) OPERATOR(pg_catalog.<=) 128
   AND (p_worker_owner_id COLLATE "C") OPERATOR(pg_catalog.~) '^[A-Za-z0-9][A-Za-z0-9._:-]*$';
