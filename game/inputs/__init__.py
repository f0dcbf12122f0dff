"""The inputs room: everything the player does becomes an intent carrying ids."""
