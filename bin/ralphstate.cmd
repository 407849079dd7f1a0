@echo off
rem `ralphstate` for cmd and PowerShell while the Claude Code plugin is enabled: the
rem plugin's launcher (hooks\launch.py cli) with the Python launcher py, else python.
where py >nul 2>nul
if %ERRORLEVEL%==0 (
    py -3 "%~dp0..\hooks\launch.py" cli %*
) else (
    python "%~dp0..\hooks\launch.py" cli %*
)
exit /b %ERRORLEVEL%
