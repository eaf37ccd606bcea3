-- harness fixture: one failing assertion
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(2);
SELECT ok(true, 'first passes');
SELECT ok(false, 'second fails');
SELECT * FROM finish();
ROLLBACK;
