package store

import (
	"context"
	"database/sql"
	"fmt"
)

// pgLockMigrate is the advisory-lock key under which an instance applies the
// schema at start-up, so instances starting together apply each migration
// once. Keys of grasp's advisory locks share the high word 0x67727370
// ("grsp") so they never meet another application's.
const (
	pgLockMigrate int64 = 0x67727370_00000001
	// pgLockSide serialises side-table transactions across instances (the
	// badger backend's sideMu, for every process on the database).
	pgLockSide int64 = 0x67727370_00000002
)

// pgMigrations are applied in order, each once, recorded in grasp_schema.
// Never edit an applied one: append.
var pgMigrations = []string{
	// 1: the side tables (purgatory, placeholders, health, rejected and
	// expired ids, schedules). key is bytea so that scans come in byte
	// order, as with badger, whatever the database's collation.
	`CREATE TABLE grasp_side (
		bucket     text   NOT NULL,
		key        bytea  NOT NULL,
		val        bytea  NOT NULL,
		expires_ns bigint NOT NULL DEFAULT 0,
		PRIMARY KEY (bucket, key)
	);
	CREATE INDEX grasp_side_expiry ON grasp_side (expires_ns) WHERE expires_ns <> 0;`,
	// 2: when this server stored an event, on the database's clock: live
	// fan-out catches up by it after a lost LISTEN connection (an event's
	// own created_at is the author's claim and may lie in the past).
	`ALTER TABLE event ADD COLUMN stored_at timestamptz NOT NULL DEFAULT clock_timestamp();
	CREATE INDEX event_stored_at ON event (stored_at);`,
	// 3: live fan-out between instances: every inserted event and every
	// side-table change is announced at commit by id or key, whoever
	// wrote it (pg_feed.go). Keys too long for a NOTIFY payload are not
	// announced (no grasp bucket has such keys).
	`CREATE FUNCTION grasp_notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		PERFORM pg_notify('grasp_events', NEW.id);
		RETURN NULL;
	END $$;
	CREATE TRIGGER grasp_event_stored AFTER INSERT ON event
		FOR EACH ROW EXECUTE FUNCTION grasp_notify_event();
	CREATE FUNCTION grasp_notify_side() RETURNS trigger LANGUAGE plpgsql AS $$
	DECLARE r grasp_side;
	BEGIN
		IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
		IF octet_length(r.key) <= 3000 THEN
			PERFORM pg_notify('grasp_side', r.bucket || ' ' || encode(r.key, 'hex'));
		END IF;
		RETURN NULL;
	END $$;
	CREATE TRIGGER grasp_side_changed AFTER INSERT OR UPDATE OR DELETE ON grasp_side
		FOR EACH ROW EXECUTE FUNCTION grasp_notify_side();`,
	// 4: GRASP-08's per-event record (privacy.go): what core/visibility
	// decided when the event was accepted, written before the event. No
	// trigger: other instances read it when they read the event.
	`CREATE TABLE grasp_privacy_event (
		id  text  PRIMARY KEY,
		val bytea NOT NULL
	);`,
}

// migratePostgres creates the event table (the eventstore backend's own
// schema, through init) and applies grasp's migrations, under an advisory
// lock held on one connection so concurrent starts take turns.
func migratePostgres(ctx context.Context, db *sql.DB, init func() error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: postgres migration: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, pgLockMigrate); err != nil {
		return fmt.Errorf("store: postgres migration lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, pgLockMigrate)
	if err := init(); err != nil {
		return fmt.Errorf("store: create the postgres event table: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS grasp_schema (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("store: postgres migration table: %w", err)
	}
	var have int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(max(version), 0) FROM grasp_schema`).Scan(&have); err != nil {
		return fmt.Errorf("store: postgres schema version: %w", err)
	}
	if have > len(pgMigrations) {
		return fmt.Errorf("store: the postgres schema is at version %d, newer than this grasp (%d): upgrade grasp", have, len(pgMigrations))
	}
	for v := have + 1; v <= len(pgMigrations); v++ {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("store: postgres migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, pgMigrations[v-1]); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: postgres migration %d: %w", v, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO grasp_schema (version) VALUES ($1)`, v); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: postgres migration %d: %w", v, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: postgres migration %d: %w", v, err)
		}
	}
	return nil
}
