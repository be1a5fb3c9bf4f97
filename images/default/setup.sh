# Runs chrooted in the new image root (server/sandboxd/image_build.c).
# E2B's base template's user: `user`, uid and gid 1000, home /home/user,
# bash as its shell, sudo without a password. E2B's protocol runs commands
# and files as this user by default (docs/E2B.md); llmbox's own API runs
# as root as before.
if ! getent passwd user >/dev/null; then
    groupadd --gid 1000 user
    useradd --uid 1000 --gid 1000 --create-home --home-dir /home/user --shell /bin/bash user
fi
usermod -aG sudo user
install -d -m 0750 /etc/sudoers.d
printf 'user ALL=(ALL:ALL) NOPASSWD: ALL\n' > /etc/sudoers.d/90-llmbox-user.tmp
chmod 0440 /etc/sudoers.d/90-llmbox-user.tmp
visudo -cf /etc/sudoers.d/90-llmbox-user.tmp
mv -f /etc/sudoers.d/90-llmbox-user.tmp /etc/sudoers.d/90-llmbox-user
