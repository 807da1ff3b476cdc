"""The browser console served by the controller."""
