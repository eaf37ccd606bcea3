-- harness fixture: two passing assertions
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
SELECT plan(2);
SELECT ok(true, 'first passes');
SELECT ok(true, 'second passes');
SELECT * FROM finish();
ROLLBACK;
