#include "secret.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_BYTES 32
#define SECRET_FILE_MAX 4096

static int ensure_dir(const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0 || errno == EEXIST)
        return 0;
    log_line("cannot create %s: %s", path, strerror(errno));
    return -1;
}

static char *read_secret(int fd, const char *path)
{
    char buf[SECRET_FILE_MAX + 1];
    struct stat st;
    size_t n = 0;
    ssize_t r;

    if (fstat(fd, &st) == 0 && (st.st_mode & 077) != 0)
        log_line("warning: %s is accessible to group or others", path);
    while (n < SECRET_FILE_MAX && (r = read(fd, buf + n, SECRET_FILE_MAX - n)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            log_line("cannot read %s: %s", path, strerror(errno));
            return NULL;
        }
        n += (size_t)r;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    char *secret = strdup(buf);
    sodium_memzero(buf, sizeof buf);
    if (secret == NULL)
        log_line("out of memory reading %s", path);
    return secret;
}

static int write_all(int fd, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Creates the file exclusively; NULL with errno EEXIST if another process
 * won the race (the caller then reads that one). */
static char *create_secret(const char *path)
{
    char hex[2 * SECRET_BYTES + 2];
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

    if (fd < 0) {
        if (errno != EEXIST)
            log_line("cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    if (random_hex(hex, sizeof hex, SECRET_BYTES) != 0)
        hex[0] = '\0';
    size_t n = strlen(hex);
    hex[n] = '\n';
    int bad = n == 0 || write_all(fd, hex, n + 1) != 0 || fsync(fd) != 0;
    bad |= close(fd) != 0;
    hex[n] = '\0';
    char *secret = bad ? NULL : strdup(hex);
    sodium_memzero(hex, sizeof hex);
    if (secret == NULL) {
        log_line("cannot write %s", path);
        unlink(path);
        errno = EIO;
    } else
        log_line("generated a new secret in %s", path);
    return secret;
}

static int secret_path(const char *var_dir, const char *name, char dir[PATH_MAX],
                       char path[PATH_MAX])
{
    if (snprintf(dir, PATH_MAX, "%s/secrets", var_dir) >= PATH_MAX ||
        snprintf(path, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX) {
        log_line("ADSERVE_VAR is too long");
        return -1;
    }
    return 0;
}

char *secret_load(const char *var_dir, const char *name)
{
    char dir[PATH_MAX], path[PATH_MAX];

    if (secret_path(var_dir, name, dir, path) != 0)
        return NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        log_line("cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    char *secret = read_secret(fd, path);
    close(fd);
    return secret;
}

char *secret_load_or_create(const char *var_dir, const char *name)
{
    char dir[PATH_MAX], path[PATH_MAX];

    if (secret_path(var_dir, name, dir, path) != 0)
        return NULL;
    if (ensure_dir(var_dir, 0755) != 0 || ensure_dir(dir, 0700) != 0)
        return NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            char *secret = read_secret(fd, path);
            close(fd);
            return secret;
        }
        if (errno != ENOENT) {
            log_line("cannot open %s: %s", path, strerror(errno));
            return NULL;
        }
        char *secret = create_secret(path);
        if (secret != NULL || errno != EEXIST)
            return secret;
    }
    return NULL;
}
