# Homebrew formula for holdline's release archive (scripts/dist.sh writes
# holdline-VERSION-TRIPLE.tar.gz). Not run: it was written on a machine without Homebrew.
# At a release, set `version`, the release page's base URL and each archive's sha256
# (from SHA256SUMS), and put this file in a tap (`brew tap OWNER/holdline`).
class Holdline < Formula
  desc "Keeps an IDE agent's turn alive: it waits for your answer in a browser panel"
  homepage "https://github.com/OWNER/holdline"
  version "0.1.0"
  license "MIT"

  RELEASE = "https://github.com/OWNER/holdline/releases/download/v#{version}".freeze

  on_macos do
    on_arm do
      url "#{RELEASE}/holdline-#{version}-aarch64-apple-darwin.tar.gz"
      sha256 "SHA256_OF_THE_AARCH64_APPLE_DARWIN_ARCHIVE"
    end
    on_intel do
      url "#{RELEASE}/holdline-#{version}-x86_64-apple-darwin.tar.gz"
      sha256 "SHA256_OF_THE_X86_64_APPLE_DARWIN_ARCHIVE"
    end
  end
  on_linux do
    on_arm do
      url "#{RELEASE}/holdline-#{version}-aarch64-unknown-linux-gnu.tar.gz"
      sha256 "SHA256_OF_THE_AARCH64_UNKNOWN_LINUX_GNU_ARCHIVE"
    end
    on_intel do
      url "#{RELEASE}/holdline-#{version}-x86_64-unknown-linux-gnu.tar.gz"
      sha256 "SHA256_OF_THE_X86_64_UNKNOWN_LINUX_GNU_ARCHIVE"
    end
  end

  def install
    bin.install "holdline-hub", "holdline-mcp"
    pkgshare.install "systemd", "launchd"
    doc.install "README.md", "README.zh-CN.md"
  end

  # `brew services start holdline` runs the hub as launchd/systemd would.
  service do
    run [opt_bin/"holdline-hub", "serve"]
    keep_alive true
  end

  test do
    assert_match "holdline-hub #{version}", shell_output("#{bin}/holdline-hub --version")
    assert_match "holdline-mcp #{version}", shell_output("#{bin}/holdline-mcp --version")
  end
end
