"""The runs factory creates in a repository: a registry under the git common dir."""
