package pgtest

import (
	"database/sql"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// Each test gets its own empty database on the one shared server.
func TestDatabasesAreFreshAndSeparate(t *testing.T) {
	a, b := DB(t), DB(t)
	if a == b {
		t.Fatalf("two tests got the same database %q", a)
	}
	if !strings.HasPrefix(a, "postgres://grasp@127.0.0.1:") {
		t.Fatalf("connection string %q is not on loopback TCP", a)
	}
	dba, err := sql.Open("postgres", a)
	if err != nil {
		t.Fatal(err)
	}
	defer dba.Close()
	if _, err := dba.Exec("CREATE TABLE only_in_a (x int); INSERT INTO only_in_a VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	dbb, err := sql.Open("postgres", b)
	if err != nil {
		t.Fatal(err)
	}
	defer dbb.Close()
	var n int
	if err := dbb.QueryRow("SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a table made in one test's database is visible in another's")
	}
}

// A database is dropped with its test, even with sessions still open.
func TestDatabaseIsDroppedAfterItsTest(t *testing.T) {
	var url string
	t.Run("user", func(t *testing.T) {
		url = DB(t)
		db, err := sql.Open("postgres", url)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		// left open on purpose
	})
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("database of a finished test still answers: %v", err)
	}
}

// Without PostgreSQL the helper says what to install (and DB fails the
// test with it) instead of skipping.
func TestMissingPostgresSaysWhatToInstall(t *testing.T) {
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	_, err := findBin(none, filepath.Join(t.TempDir(), "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("missing initdb reported as %v", err)
	}
	if dir, err := binDir(); err != nil || !isFile(filepath.Join(dir, "initdb")) {
		t.Fatalf("installed PostgreSQL not found: %q %v", dir, err)
	}
}
