-- harness fixture: plans three assertions, runs two
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(3);
SELECT ok(true, 'first passes');
SELECT ok(true, 'second passes');
SELECT * FROM finish();
ROLLBACK;
