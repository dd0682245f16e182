/* A hostile program for the sandbox tests: each mode tries one escape and reports what happened.
   Exit 0: the attempt SUCCEEDED (escape); exit 10: it was refused; other: setup error. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int tcp(const char *ip, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { printf("socket: %s\n", strerror(errno)); return 10; }
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { printf("connect: %s\n", strerror(errno)); return 10; }
    printf("connected to %s:%d\n", ip, port);
    return 0;
}

static int unix_abstract(const char *name) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) { printf("socket: %s\n", strerror(errno)); return 10; }
    struct sockaddr_un a = {0};
    a.sun_family = AF_UNIX;
    a.sun_path[0] = 0;
    strncpy(a.sun_path + 1, name, sizeof a.sun_path - 2);
    socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
    if (connect(fd, (struct sockaddr *)&a, len) != 0) { printf("connect: %s\n", strerror(errno)); return 10; }
    printf("connected to @%s\n", name);
    return 0;
}

static int write_file(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { printf("open %s: %s\n", path, strerror(errno)); return 10; }
    if (write(fd, "pwned\n", 6) != 6) { printf("write: %s\n", strerror(errno)); return 10; }
    close(fd);
    printf("wrote %s\n", path);
    return 0;
}

static int read_file(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { printf("open %s: %s\n", path, strerror(errno)); return 10; }
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0) { printf("read: %s\n", strerror(errno)); return 10; }
    buf[n] = 0;
    printf("read %s: %s\n", path, buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *mode = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(mode, "tcp")) return tcp(argv[2], atoi(argv[3]));
    if (!strcmp(mode, "unix")) return unix_abstract(argv[2]);
    if (!strcmp(mode, "write")) return write_file(argv[2]);
    if (!strcmp(mode, "read")) return read_file(argv[2]);
    if (!strcmp(mode, "spin")) { volatile unsigned long x = 0; for (;;) x++; }
    if (!strcmp(mode, "alloc")) {  /* touch N MiB */
        size_t n = (size_t)atol(argv[2]) << 20;
        char *p = malloc(n);
        if (!p) { printf("malloc %zu: refused\n", n); return 10; }
        memset(p, 1, n);
        printf("allocated %zu\n", n);
        return 0;
    }
    if (!strcmp(mode, "bigfile")) {  /* write N MiB to argv[3] */
        int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) return 3;
        static char buf[1 << 20];
        for (long i = 0; i < atol(argv[2]); i++)
            if (write(fd, buf, sizeof buf) != sizeof buf) { printf("write: %s\n", strerror(errno)); return 10; }
        printf("wrote %s MiB\n", argv[2]);
        return 0;
    }
    if (!strcmp(mode, "forkbomb")) {  /* fork N sleepers that outlive this process unless the sandbox kills them */
        int n = atoi(argv[2]), made = 0;
        for (int i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid == 0) { execl("/bin/sleep", "sleep", argv[3], (char *)NULL); _exit(1); }
            if (pid < 0) { printf("fork %d: %s\n", i, strerror(errno)); break; }
            made++;
        }
        printf("forked %d\n", made);
        if (argc > 4) pause();  /* wait to be killed */
        return made == n ? 0 : 10;
    }
    return 2;
}
