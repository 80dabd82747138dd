// SPDX-License-Identifier: GPL-2.0-only
/*
 * enroll-key CERT.der: add an X.509 certificate to the kernel's
 * .secondary_trusted_keys keyring, as keyctl padd would (busybox has no
 * keyctl).  The kernel accepts it only if a key it already trusts signed
 * it.  Built statically on the host, run as root in the boot test's guest.
 *
 * Prints the new key's serial number; exits 1 with the reason on failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The keyring's serial number, from /proc/keys (its first field, hex). */
static long find_keyring(const char *name)
{
	char line[512];
	FILE *f = fopen("/proc/keys", "r");
	long id = -1;

	if (!f) {
		perror("enroll-key: /proc/keys");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, " keyring ") && strstr(line, name)) {
			id = strtol(line, NULL, 16);
			break;
		}
	}
	fclose(f);
	if (id < 0)
		fprintf(stderr, "enroll-key: no keyring %s in /proc/keys\n",
			name);
	return id;
}

int main(int argc, char **argv)
{
	static char cert[65536];
	size_t len;
	long keyring, key;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: enroll-key CERT.der\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	len = fread(cert, 1, sizeof(cert), f);
	fclose(f);
	keyring = find_keyring(".secondary_trusted_keys");
	if (keyring < 0)
		return 1;
	key = syscall(SYS_add_key, "asymmetric", "", cert, len, keyring);
	if (key < 0) {
		fprintf(stderr, "enroll-key: add_key: %s\n", strerror(errno));
		return 1;
	}
	printf("%ld\n", key);
	return 0;
}
